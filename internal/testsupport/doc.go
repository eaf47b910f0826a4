// Package testsupport holds, in its sub-packages, what the project's own
// tests and benchmarks use and no production code does: testkit (broker
// helpers, leak checks, waiting), benchpair (benchmarks measured as pairs
// in one run), benchreport (the make bench table), jsoncheck (the
// differential test of the generated JSON decoders), testpb (the protocol
// buffer messages of the codec tests and benchmarks) and foreigncodec (a
// Python producer of each codec). The production
// packages of internal/ beside it are shared by the generator, the runtime
// and the command.
package testsupport
