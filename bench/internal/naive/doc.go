// Package naive holds the designs offlinebox replaced, implemented for real
// so the benchmarks can measure them in the same run, on the same Redis:
//
//   - the flat inbox: one Redis list per user holding a copy of every
//     message sent to them, in arrival order (the list index is the user's
//     seq); a pull reads everything after the client's seq, keeps at most
//     200 messages per conversation (the newest) and returns it all as one
//     box, the client's cursor moving to the end. This is the founding
//     documents' old system: one 1.4 MB box, and the @mentions cut off;
//   - the one-round-trip writer: per message one INCR for its seq, then
//     one RPUSH per recipient, each its own round trip.
//
// Keys live under their own prefix so that the memory of offlinebox's keys
// is measured without them.
package naive
