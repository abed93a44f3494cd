package stream

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogger sends franz-go's own logs (group joins, rebalances, broker
// errors) to slog. Warnings and errors only, unless the slog logger takes
// debug: then franz-go's info lines too (one per group state change).
type kgoLogger struct {
	log   *slog.Logger
	level kgo.LogLevel
}

// KgoLogger is a franz-go logger writing to log, for clients other than
// the runner's (producers, admin clients): warnings and errors, and
// franz-go's info lines when log takes debug.
func KgoLogger(log *slog.Logger) kgo.Logger {
	return kgoLogger{log: log, level: kgo.LogLevelWarn}
}

func (l kgoLogger) Level() kgo.LogLevel {
	if l.level < kgo.LogLevelInfo && l.log.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo
	}
	return l.level
}

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
