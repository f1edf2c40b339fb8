package testenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/grantwire/grantwire/hostabi"
)

// Outside is what a corpus world on real storage (the OS shell's, PostgreSQL's) keeps for
// the scenario beyond its processes: the locks held by the outside process (the corpus's
// holds, released only between steps) and the keyring failures the scenario injects
// (keyring_failures, as a real store cannot be told to fail one call). A world embeds it
// and sets Locks (the outside process's own, unwrapped) and Ctx; Release and FailKeyring
// then implement conformance.World as they are, and Hold with the holder's name.
type Outside struct {
	Locks hostabi.Locks   // the outside process's locks
	Ctx   context.Context // the world's

	mu       sync.Mutex
	holds    map[string]func() // lock → release
	failures []keyringFailure
}

type keyringFailure struct {
	op, user string
	count    int
	insecure bool
}

// ErrInjected is the plain injected keyring failure.
var ErrInjected = errors.New("testenv: injected failure")

// Hold has the outside process take lock (at once: it is free between steps); holding it
// again does nothing.
func (o *Outside) Hold(lock, holder string) error {
	if o.Held(lock) {
		return nil
	}
	release, err := o.Locks.TryLock(o.Ctx, lock, 0)
	if err != nil {
		return fmt.Errorf("%s cannot hold %s: %w", holder, lock, err)
	}
	o.mu.Lock()
	if o.holds == nil {
		o.holds = map[string]func(){}
	}
	o.holds[lock] = release
	o.mu.Unlock()
	return nil
}

// Release releases a lock the outside process holds (nothing when it holds none).
func (o *Outside) Release(lock string) error {
	o.mu.Lock()
	release, ok := o.holds[lock]
	delete(o.holds, lock)
	o.mu.Unlock()
	if ok {
		release()
	}
	return nil
}

// Held reports whether the outside process holds lock.
func (o *Outside) Held(lock string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.holds[lock]
	return ok
}

// ReleaseAll releases every lock the outside process holds (a world's Close).
func (o *Outside) ReleaseAll() {
	o.mu.Lock()
	holds := o.holds
	o.holds = nil
	o.mu.Unlock()
	for _, release := range holds {
		release()
	}
}

// FailKeyring has the next count keyring calls op ("get", "set", "delete") for user fail:
// as an insecure store (HostErrInsecureStore) or with ErrInjected.
func (o *Outside) FailKeyring(op, user string, count int, insecure bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures = append(o.failures, keyringFailure{op: op, user: user, count: count, insecure: insecure})
	return nil
}

// failure uses up one injected failure of op for user, if any.
func (o *Outside) failure(op, user string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, f := range o.failures {
		if f.op != op || f.user != user {
			continue
		}
		if o.failures[i].count--; o.failures[i].count <= 0 {
			o.failures = append(o.failures[:i], o.failures[i+1:]...)
		}
		if f.insecure {
			return &hostabi.HostError{Code: hostabi.HostErrInsecureStore, Detail: "testenv: injected",
				Fix: "install and start a Secret Service such as gnome-keyring (Debian/Ubuntu: apt-get install gnome-keyring), KeePassXC or KWallet"}
		}
		return ErrInjected
	}
	return nil
}

// Keyring wraps a process's keyring: the injected failures first, then inner under the
// service real names (the world's own services, so that worlds do not meet).
func (o *Outside) Keyring(inner hostabi.Keyring, real func(service string) string) hostabi.Keyring {
	return failingKeyring{o: o, inner: inner, real: real}
}

type failingKeyring struct {
	o     *Outside
	inner hostabi.Keyring
	real  func(string) string
}

func (k failingKeyring) Get(ctx context.Context, service, user string) (string, error) {
	if err := k.o.failure("get", user); err != nil {
		return "", err
	}
	return k.inner.Get(ctx, k.real(service), user)
}

func (k failingKeyring) Set(ctx context.Context, service, user, value string) error {
	if err := k.o.failure("set", user); err != nil {
		return err
	}
	return k.inner.Set(ctx, k.real(service), user, value)
}

func (k failingKeyring) Delete(ctx context.Context, service, user string) error {
	if err := k.o.failure("delete", user); err != nil {
		return err
	}
	return k.inner.Delete(ctx, k.real(service), user)
}

// ShortLocks wraps a process's locks: a wait longer than busy for a lock the outside
// process holds is cut to busy, its answer being known (the holder releases only between
// steps).
func (o *Outside) ShortLocks(inner hostabi.Locks, busy time.Duration) hostabi.Locks {
	return shortLocks{o: o, inner: inner, busy: busy}
}

type shortLocks struct {
	o     *Outside
	inner hostabi.Locks
	busy  time.Duration
}

func (l shortLocks) TryLock(ctx context.Context, name string, wait time.Duration) (func(), error) {
	if wait > l.busy && l.o.Held(name) {
		wait = l.busy
	}
	return l.inner.TryLock(ctx, name, wait)
}

// Processes keeps a world's processes' capabilities by name (conformance.Processes): each
// opened the first time it is asked for. The zero value is ready.
type Processes struct {
	mu    sync.Mutex
	procs map[string]hostabi.Capabilities
}

// Get returns process name's capabilities, opening them with open the first time.
func (p *Processes) Get(name string, open func() (hostabi.Capabilities, error)) (hostabi.Capabilities, error) {
	p.mu.Lock()
	c, ok := p.procs[name]
	p.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := open()
	if err != nil {
		return hostabi.Capabilities{}, err
	}
	p.mu.Lock()
	if p.procs == nil {
		p.procs = map[string]hostabi.Capabilities{}
	}
	p.procs[name] = c
	p.mu.Unlock()
	return c, nil
}
