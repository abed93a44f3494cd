package stream

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogger sends franz-go's own logs (group joins, rebalances, broker
// errors) to slog. Warnings and errors only by default: info is one line per
// group state change, which operators can opt into with kgo.WithLogger in
// Config.ExtraOpts.
type kgoLogger struct {
	log   *slog.Logger
	level kgo.LogLevel
}

func (l kgoLogger) Level() kgo.LogLevel { return l.level }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var sl slog.Level
	switch level {
	case kgo.LogLevelError:
		sl = slog.LevelError
	case kgo.LogLevelWarn:
		sl = slog.LevelWarn
	case kgo.LogLevelInfo:
		sl = slog.LevelInfo
	default:
		sl = slog.LevelDebug
	}
	l.log.Log(context.Background(), sl, msg, keyvals...)
}
