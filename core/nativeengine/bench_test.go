package nativeengine_test

import (
	"context"
	"testing"
)

// BenchmarkEpisode measures each captured question of the gate and the refresh plan alone.
func BenchmarkEpisode(b *testing.B) {
	e, eps := gateEpisodes(b)
	buf := make([]byte, 0, 16384)
	for _, name := range []string{"allow", "not-granted", "refresh"} {
		for _, ep := range eps[name] {
			b.Run(ep.Name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.DecideJSON(context.Background(), buf[:0], ep.Query); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
