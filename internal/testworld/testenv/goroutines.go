package testenv

import (
	"sync"
	"testing"
	"time"
)

// InParallel runs workers goroutines at once, worker w making rounds calls call(w, i)
// (i from 0) until one returns an error, and then fails tb with the first error a worker
// returned. The engines' concurrency tests share it: run them with -race.
func InParallel(tb testing.TB, workers, rounds int, call func(w, i int) error) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if err := call(w, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// Within runs f and fails tb unless f returns within d (a read that would block on a FIFO,
// a decision that must stop when its context ends); what names f in the failure. It is
// not a timing test: d is far above what f takes when it works.
func Within(tb testing.TB, d time.Duration, what string, f func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		tb.Fatalf("%s did not return within %s", what, d)
	}
}
