package blame

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Reading a range's committed versions through git cat-file --batch: git's
// reader (C zlib, its delta base cache) inflates several times faster than
// the store's, it answers a whole list without a round trip per object,
// and it runs on another core while this process matches lines.

// fetched is one answer of a prefetch, in the order asked.
type fetched struct {
	i    int
	typ  string
	body []byte
	err  error
}

// prefetch asks git cat-file --batch for every spec at once (git answers
// as fast as it reads, without a round trip per object) and delivers the
// answers in order on the channel, at most window ahead of the reader.
// A spec git cannot take (a newline in a path) or that is missing comes
// back with err set; the caller reads it another way.
func prefetch(ctx context.Context, top string, specs []string, window int) <-chan fetched {
	out := make(chan fetched, window)
	go func() {
		defer close(out)
		fail := func(from int, err error) {
			for i := from; i < len(specs); i++ {
				select {
				case out <- fetched{i: i, err: err}:
				case <-ctx.Done():
					return
				}
			}
		}
		cmd := exec.CommandContext(ctx, "git", "-C", top, "cat-file", "--batch", "--buffer")
		in, err := cmd.StdinPipe()
		if err != nil {
			fail(0, err)
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			fail(0, err)
			return
		}
		if err := cmd.Start(); err != nil {
			fail(0, err)
			return
		}
		defer cmd.Wait()
		go func() {
			w := bufio.NewWriter(in)
			for _, s := range specs {
				if strings.ContainsAny(s, "\n\x00") {
					s = "" // answered "missing": the caller reads it itself
				}
				w.WriteString(s + "\n")
			}
			w.Flush()
			in.Close()
		}()
		r := bufio.NewReaderSize(stdout, 256<<10)
		for i := range specs {
			f := fetched{i: i}
			head, err := r.ReadString('\n')
			if err != nil {
				fail(i, fmt.Errorf("git cat-file --batch: %w", err))
				return
			}
			fs := strings.Fields(head)
			switch {
			case len(fs) == 3:
				n, err := strconv.ParseInt(fs[2], 10, 64)
				if err != nil || n < 0 || n > 1<<34 {
					fail(i, fmt.Errorf("git cat-file answered %q", head))
					return
				}
				body := make([]byte, n+1)
				if _, err := io.ReadFull(r, body); err != nil {
					fail(i, fmt.Errorf("git cat-file --batch: %w", err))
					return
				}
				f.typ, f.body = fs[1], body[:n]
			default:
				f.err = fmt.Errorf("%s: %s", specs[i], strings.TrimSpace(head))
			}
			select {
			case out <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// parallelOver runs fn on every item of the channel on up to GOMAXPROCS
// goroutines and returns the first error (draining the channel).
func parallelOver(ctx context.Context, items <-chan fetched, fn func(fetched) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				mu.Lock()
				stop := first != nil
				mu.Unlock()
				if stop || ctx.Err() != nil {
					continue
				}
				if err := fn(it); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
