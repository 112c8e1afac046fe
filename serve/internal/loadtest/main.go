// Command loadtest is the load side of `make bench-serve` (serve/bench.sh):
// a baseline HTTP server to compare kwdata's against, a keyword extractor for
// the sample planner export, and a closed-loop load generator.
//
//	loadtest baseline --addr 127.0.0.1:8181
//	loadtest keywords keyword-planner.csv > keywords.txt
//	loadtest load --base http://127.0.0.1:8080 --keywords keywords.txt --key K --conns 32 --duration 10s
//
// The baseline is the smallest useful net/http server: one handler that
// encodes a fixed keyword record with encoding/json on every request. The
// load generator speaks HTTP/1.1 directly over keep-alive connections,
// with prebuilt requests and no per-request allocation, so that on one
// core it can saturate a server on the other; it records every latency in
// a histogram of 1 µs buckets, so p50 and p99 are exact to the
// microsecond.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "baseline":
		err = runBaseline(os.Args[2:])
	case "keywords":
		err = runKeywords(os.Args[2:])
	case "load":
		err = runLoad(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: loadtest baseline|keywords|load [flags]")
	os.Exit(2)
}

// trendMonth and relatedKeyword shape the baseline's record like a real
// answer of GET /v1/keyword (12 months, 10 related), so both servers
// write documents of about the same size.
type trendMonth struct {
	Month  string `json:"month"`
	Volume int64  `json:"volume"`
}

type relatedKeyword struct {
	Keyword    string  `json:"keyword"`
	Volume     int64   `json:"volume"`
	CPC        float64 `json:"cpc"`
	Overlap    string  `json:"overlap"`
	SameIntent bool    `json:"same_intent"`
}

type keywordRecord struct {
	Keyword     string           `json:"keyword"`
	Country     string           `json:"country"`
	Volume      int64            `json:"volume"`
	CPC         float64          `json:"cpc"`
	Competition float64          `json:"competition"`
	Updated     string           `json:"updated"`
	Intent      string           `json:"intent"`
	Trend       []trendMonth     `json:"trend"`
	Related     []relatedKeyword `json:"related"`
}

func fixedRecord() *keywordRecord {
	rec := &keywordRecord{Keyword: "running shoes", Country: "US", Volume: 301000, CPC: 1.23,
		Competition: 0.87, Updated: "2026-11-21", Intent: "running shoes"}
	for m := range 12 {
		rec.Trend = append(rec.Trend, trendMonth{Month: fmt.Sprintf("%04d-%02d", 2025+(10+m)/12, (10+m)%12+1), Volume: 246000 + int64(m)*1000})
	}
	for i := range 10 {
		rec.Related = append(rec.Related, relatedKeyword{Keyword: fmt.Sprintf("best running shoes %d", i),
			Volume: 90500 - int64(i)*100, CPC: 1.45, Overlap: strconv.Itoa(14-i) + "/20", SameIntent: i < 3})
	}
	return rec
}

// runBaseline serves the fixed record on every path until SIGINT/SIGTERM.
func runBaseline(args []string) error {
	fs := flag.NewFlagSet("baseline", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:8181", "address to listen on")
	pprofAddr := fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this separate address, so a benchmark can profile the baseline beside kwdata serve --pprof; off by default")
	fs.Parse(args)
	if *pprofAddr != "" {
		pln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fmt.Errorf("cannot listen for pprof on %s: %w", *pprofAddr, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		go (&http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}).Serve(pln)
	}
	rec := fixedRecord()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(rec)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", *addr, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("cannot serve on %s: %w", *addr, err)
	}
	return nil
}

// runKeywords prints the keyword column of a Keyword Planner export
// (UTF-16 with a BOM, or UTF-8; tab or comma separated; preamble lines
// before the header row), one keyword a line.
func runKeywords(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: loadtest keywords PLANNER.csv")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return fmt.Errorf("cannot open planner export: %w", err)
	}
	defer f.Close()
	dec := unicode.BOMOverride(unicode.UTF8.NewDecoder())
	sc := bufio.NewScanner(transform.NewReader(f, dec))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	sep, n := "", 0
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if sep == "" {
			for _, s := range []string{"\t", ","} {
				if first, _, _ := strings.Cut(line, s); strings.Trim(first, `"`) == "Keyword" {
					sep = s
				}
			}
			continue
		}
		k, _, _ := strings.Cut(line, sep)
		if k = strings.Trim(k, `"`); k != "" {
			out.WriteString(k)
			out.WriteByte('\n')
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("cannot read planner export %s: %w", args[0], err)
	}
	if sep == "" {
		return fmt.Errorf("planner export %s has no Keyword header row", args[0])
	}
	if n == 0 {
		return fmt.Errorf("planner export %s has no keywords", args[0])
	}
	return out.Flush()
}

// histMax is the top of the 1 µs buckets; slower answers are kept whole.
const histMax = 100_000 // 100 ms

// hist records latencies in microseconds.
type hist struct {
	buckets []uint32
	slow    []int64 // latencies >= histMax µs
	n       int64
}

func newHist() *hist { return &hist{buckets: make([]uint32, histMax)} }

func (h *hist) add(us int64) {
	h.n++
	if us < histMax {
		h.buckets[us]++
		return
	}
	h.slow = append(h.slow, us)
}

func (h *hist) merge(o *hist) {
	h.n += o.n
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
	h.slow = append(h.slow, o.slow...)
}

// quantile returns the smallest latency (µs) at or below which a fraction
// q of the recorded requests fall.
func (h *hist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.999999)
	rank = max(rank, 1)
	var seen int64
	for i, c := range h.buckets {
		seen += int64(c)
		if seen >= rank {
			return int64(i)
		}
	}
	slices.Sort(h.slow)
	return h.slow[rank-seen-1]
}

// worker is one keep-alive connection's closed loop.
type worker struct {
	addr     string
	reqs     [][]byte
	hist     *hist
	statuses map[int]int64
	errors   int64
}

func (w *worker) run(ctx context.Context, start int, measureFrom, until time.Time) {
	var conn net.Conn
	var br *bufio.Reader
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	i := start
	for ctx.Err() == nil {
		if conn == nil {
			c, err := net.Dial("tcp", w.addr)
			if err != nil {
				w.errors++
				time.Sleep(10 * time.Millisecond)
				continue
			}
			conn, br = c, bufio.NewReaderSize(c, 16<<10)
			conn.SetDeadline(until.Add(5 * time.Second))
		}
		req := w.reqs[i]
		i++
		if i == len(w.reqs) {
			i = 0
		}
		t0 := time.Now()
		if t0.After(until) {
			return
		}
		status, err := roundTrip(conn, br, req)
		t1 := time.Now()
		if err != nil {
			conn.Close()
			conn = nil
			if t0.After(measureFrom) && ctx.Err() == nil {
				w.errors++
			}
			continue
		}
		if t0.After(measureFrom) {
			w.hist.add(t1.Sub(t0).Microseconds())
			w.statuses[status]++
		}
	}
}

// roundTrip writes one prebuilt request and reads its answer, discarding
// the body. Only what a Go net/http server sends is understood: a status
// line, fields, and a Content-Length or chunked body.
func roundTrip(conn net.Conn, br *bufio.Reader, req []byte) (int, error) {
	if _, err := conn.Write(req); err != nil {
		return 0, err
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	length, chunked := int64(-1), false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			if length, err = strconv.ParseInt(string(value), 10, 64); err != nil {
				return 0, fmt.Errorf("malformed Content-Length %q", value)
			}
		case asciiEqualFold(name, "Transfer-Encoding"):
			chunked = asciiEqualFold(value, "chunked")
		}
	}
	switch {
	case chunked:
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return 0, err
			}
			size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("malformed chunk size %q", line)
			}
			if _, err := br.Discard(int(size) + 2); err != nil {
				return 0, err
			}
			if size == 0 {
				break
			}
		}
	case length >= 0:
		if _, err := br.Discard(int(length)); err != nil {
			return 0, err
		}
	default:
		return 0, errors.New("answer without a length")
	}
	return status, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i]|0x20, s[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// runLoad drives GET /v1/keyword over the keywords of a file from conns
// keep-alive connections for the duration after a warm-up, and prints one
// line: requests/s, p50 and p99 in ms, and the answers by status.
func runLoad(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	base := fs.String("base", "http://127.0.0.1:8080", "server to load")
	path := fs.String("path", "/v1/keyword", "path of the lookups")
	kwFile := fs.String("keywords", "", "file of keywords, one a line (required)")
	country := fs.String("country", "us", "country parameter of the lookups")
	key := fs.String("key", "", "API key sent as Authorization: Bearer (none: anonymous)")
	conns := fs.Int("conns", 32, "connections, each with one request in flight")
	duration := fs.Duration("duration", 10*time.Second, "measured time")
	warmup := fs.Duration("warmup", time.Second, "unmeasured time before it")
	seed := fs.Uint64("seed", 1, "seed of the keyword order")
	label := fs.String("label", "load", "first field of the result line")
	pid := fs.Int("pid", 0, "process ID of the server (same machine): also report the CPU time (user+sys) it spent per measured request, which other load on its core does not inflate the way it does requests/s")
	fs.Parse(args)
	u, err := url.Parse(*base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("--base %q is not an http:// URL", *base)
	}
	data, err := os.ReadFile(*kwFile)
	if err != nil {
		return fmt.Errorf("cannot read keywords: %w", err)
	}
	var reqs [][]byte
	for k := range strings.Lines(string(data)) {
		k = strings.TrimRight(k, "\r\n")
		if k == "" {
			continue
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "GET %s?q=%s&country=%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kwdata-loadtest\r\n",
			*path, url.QueryEscape(k), url.QueryEscape(*country), u.Host)
		if *key != "" {
			fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", *key)
		}
		b.WriteString("\r\n")
		reqs = append(reqs, b.Bytes())
	}
	if len(reqs) == 0 {
		return fmt.Errorf("%s holds no keywords", *kwFile)
	}
	r := rand.New(rand.NewPCG(*seed, 0))
	r.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	begin := time.Now()
	measureFrom := begin.Add(*warmup)
	until := measureFrom.Add(*duration)
	workers := make([]*worker, *conns)
	var wg sync.WaitGroup
	var cpu0, cpu1 time.Duration
	var cpuErr error
	if *pid > 0 {
		wg.Go(func() {
			time.Sleep(time.Until(measureFrom))
			if cpu0, cpuErr = processCPU(*pid); cpuErr != nil {
				return
			}
			time.Sleep(time.Until(until))
			cpu1, cpuErr = processCPU(*pid)
		})
	}
	for i := range workers {
		w := &worker{addr: u.Host, reqs: reqs, hist: newHist(), statuses: map[int]int64{}}
		workers[i] = w
		wg.Go(func() { w.run(ctx, i*len(reqs) / *conns, measureFrom, until) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	total := newHist()
	statuses := map[int]int64{}
	var errs int64
	for _, w := range workers {
		total.merge(w.hist)
		for s, n := range w.statuses {
			statuses[s] += n
		}
		errs += w.errors
	}
	codes := slices.Sorted(func(yield func(int) bool) {
		for s := range statuses {
			if !yield(s) {
				return
			}
		}
	})
	var sb strings.Builder
	for _, s := range codes {
		fmt.Fprintf(&sb, " status_%d=%d", s, statuses[s])
	}
	if *pid > 0 && total.n > 0 {
		if cpuErr != nil {
			return cpuErr
		}
		fmt.Fprintf(&sb, " cpu_us_per_req=%.2f", float64(cpu1-cpu0)/float64(time.Microsecond)/float64(total.n))
	}
	fmt.Printf("%s rps=%.0f p50_ms=%.3f p99_ms=%.3f requests=%d errors=%d%s\n", *label,
		float64(total.n)/duration.Seconds(), float64(total.quantile(0.50))/1000, float64(total.quantile(0.99))/1000,
		total.n, errs, sb.String())
	if total.n == 0 {
		return errors.New("no request was answered")
	}
	return nil
}

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ),
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// processCPU returns the CPU time (user+sys, all threads) process pid has
// used, from /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cannot read the CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cannot parse the CPU times in /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}
