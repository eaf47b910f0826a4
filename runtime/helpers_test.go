package runtime_test

type job struct {
	ID uint64 `json:"id"`
}
