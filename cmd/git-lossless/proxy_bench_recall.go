package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/proxy"
)

// recallPairs is the stale-recall measurement of `bench proxy`: one
// compacted request, whose last user message names a detail only the
// folded turns hold, sent alternately through a proxy with recall on and
// one with it off (same upstream, same settings otherwise, the summary
// already in each one's memo). Added latencies in ms; Diff has one
// difference per pair.
type recallPairs struct {
	On, Off, Diff []float64
	Recalls       int // requests the recall proxy quoted lines into
	Lines         int
}

// benchRecall runs the recall pairs against upURL. body is the request.
func benchRecall(ctx context.Context, o benchProxyOpts, upURL string, backend *stubbackend.Server, client *http.Client, body []byte) (*recallPairs, error) {
	start := func(on bool) (*proxy.Server, context.CancelFunc, error) {
		cfg := proxy.DefaultConfig()
		cfg.Listen, cfg.Upstream, cfg.Archive, cfg.Writer, cfg.LogPath = "127.0.0.1:0", upURL, &proxy.MemoryArchive{}, "proxy-bench-recall", "-"
		cfg.Recall = on
		if o.backend == stubbackend.OpenAI {
			cfg.Window = o.window
		}
		pctx, stop := context.WithCancel(ctx)
		srv, err := proxy.Run(pctx, cfg)
		if err != nil {
			stop()
			return nil, nil, err
		}
		return srv, stop, nil
	}
	onSrv, stopOn, err := start(true)
	if err != nil {
		return nil, err
	}
	defer func() { stopOn(); onSrv.Wait() }()
	offSrv, stopOff, err := start(false)
	if err != nil {
		return nil, err
	}
	defer func() { stopOff(); offSrv.Wait() }()

	// one sends body through srv and returns its added latency: the round
	// trip less the stub's time for the forwarded request.
	one := func(srv *proxy.Server) (float64, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", "http://"+srv.Addr+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(proxy.SessionHeader, "bench-recall")
		n0 := len(backend.Chat())
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("bench proxy: recall request: HTTP %d", resp.StatusCode)
		}
		chats := backend.Chat()
		if len(chats) <= n0 {
			return 0, fmt.Errorf("bench proxy: the stub saw no forwarded recall request")
		}
		return float64(d-chats[len(chats)-1].Duration) / 1e6, nil
	}
	// Each proxy summarises the request once; every later send is served
	// from its memo.
	for _, srv := range []*proxy.Server{onSrv, offSrv} {
		for i := 0; i < 3; i++ {
			if _, err := one(srv); err != nil {
				return nil, err
			}
		}
	}
	r := &recallPairs{}
	for i := 0; i < o.pairs; i++ {
		order := []*proxy.Server{onSrv, offSrv}
		if i%2 == 1 {
			order = []*proxy.Server{offSrv, onSrv}
		}
		var on, off float64
		for _, srv := range order {
			x, err := one(srv)
			if err != nil {
				return nil, err
			}
			if srv == onSrv {
				on = x
			} else {
				off = x
			}
		}
		r.On, r.Off, r.Diff = append(r.On, on), append(r.Off, off), append(r.Diff, on-off)
	}
	if err := onSrv.Proxy.Idle(ctx); err != nil {
		return nil, err
	}
	st := onSrv.Proxy.Stats()
	r.Recalls, r.Lines = st.Recalls, st.RecallLines
	if off := offSrv.Proxy.Stats(); off.Compacted == 0 || st.Compacted == 0 {
		return nil, fmt.Errorf("bench proxy: the recall request was not compacted (%d, %d compactions)", st.Compacted, off.Compacted)
	}
	return r, nil
}
