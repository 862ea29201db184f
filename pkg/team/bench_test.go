package team

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"
)

// BenchmarkRoundTrip measures a message from the lead to a teammate and
// its answer back, with no model: send (durable in the inbox), wake the
// driver, take, read, consume (durable in the member's log), answer, and
// the same on the lead's side. One driver goroutine serves the team, as a
// bounded worker pool would. Four fsyncs per round trip.
func BenchmarkRoundTrip(b *testing.B) {
	_, tm := newTeam(b, Spec{}, "fe-dev")
	done := make(chan struct{})
	stop := make(chan struct{})
	driverDone := make(chan struct{})
	go func() {
		defer close(driverDone)
		for {
			select {
			case <-tm.Ready():
			case <-stop:
				return
			}
			for {
				name, ok := tm.Take()
				if !ok {
					break
				}
				msgs, err := tm.Inbox(name, 0)
				if err == nil {
					err = tm.Consume(name, msgs)
				}
				for _, m := range msgs {
					if err != nil {
						break
					}
					if name == "lead" {
						done <- struct{}{}
						continue
					}
					_, err = tm.Send(Message{Type: TypeMessage, From: name, To: m.From, Content: "pong"})
				}
				tm.Release(name)
				if err != nil {
					b.Error(err)
					return
				}
			}
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := tm.Send(Message{Type: TypeMessage, From: "lead", To: "fe-dev", Content: "ping"}); err != nil {
			b.Fatal(err)
		}
		<-done
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	close(stop)
	<-driverDone
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}

// BenchmarkIdleMembers measures what 1,000 idle teammates cost: heap
// bytes per member (each spawned and sent one message that it consumed,
// so its inbox and log are not empty), goroutines (none extra) and file
// descriptors (none per member: their logs are parked; the team log is
// the one descriptor a team holds).
func BenchmarkIdleMembers(b *testing.B) {
	const n = 1000
	for b.Loop() {
		b.StopTimer()
		s, err := Open(Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		goroutines, fds := runtime.NumGoroutine(), countFDs(b)
		heap := heapInUse()
		b.StartTimer()
		tm, err := s.Create(Spec{ID: "big", Lead: MemberSpec{Name: "lead"}})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			name := fmt.Sprintf("mate-%d", i)
			if _, err := tm.Spawn("lead", MemberSpec{Name: name, Role: "worker", Profile: "coder"}); err != nil {
				b.Fatal(err)
			}
			if _, err := tm.Send(Message{Type: TypeMessage, From: "lead", To: name, Content: "hello"}); err != nil {
				b.Fatal(err)
			}
			msgs, err := tm.Inbox(name, 0)
			if err == nil {
				err = tm.Consume(name, msgs)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		perMember := float64(heapInUse()-heap) / n
		extraG, extraFD := runtime.NumGoroutine()-goroutines, countFDs(b)-fds
		if extraG != 0 || extraFD > 1 {
			b.Fatalf("1,000 idle members hold %d goroutines and %d descriptors, want 0 and the team log's 1", extraG, extraFD)
		}
		b.ReportMetric(perMember, "B/idle-member")
		b.ReportMetric(float64(extraG), "goroutines")
		b.ReportMetric(float64(extraFD), "fds")
		runtime.KeepAlive(tm)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func countFDs(tb testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Skip("no /proc/self/fd to count descriptors")
	}
	return len(ents)
}
