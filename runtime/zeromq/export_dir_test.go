package zeromq

import "os"

// SetDirFree makes d read the free space of its file system from free.
// Set it before d is used.
func SetDirFree(d *DeadLetterDir, free func() (uint64, error)) { d.free = free }

// FailDirWrites makes d call fail with each line it is about to write to
// its file (a letter, or a tombstone: {"del":[...]}): an error fail
// returns fails the write, which writes nothing, as on a full disk. Set
// it before d is used.
func FailDirWrites(d *DeadLetterDir, fail func(line []byte) error) {
	write := d.write
	d.write = func(f *os.File, b []byte, off int64) error {
		if err := fail(b); err != nil {
			return err
		}
		return write(f, b, off)
	}
}
