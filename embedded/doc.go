// Package embedded runs the stores offlinebox needs as child processes of the
// current program: redis-server (alone or as a small Redis Cluster),
// clickhouse-server, and franz-go's in-process kfake broker. `offlinebox demo`
// uses it to bring up a whole system on one machine, and internal/testenv uses
// it to give test binaries real servers.
//
// Every child lives in its own folder (data and logs), listens on 127.0.0.1
// only, and is tied to the life of its parent twice over: it is stopped when
// the context given to its Start function ends, and on Linux the kernel kills
// it (Pdeathsig) if the parent dies without stopping it, so a crashed test
// binary or demo never leaves servers behind. Children run in their own
// process group, so a Ctrl-C in a terminal reaches only the parent, which
// then shuts its children down in order.
//
// A Process can be stopped, killed with SIGKILL and restarted on the same
// ports with the same data: the fault tests use that to take a store away
// and give it back.
package embedded
