// Package livecompat is test support: the live bus envelope as API nodes
// of the release before the binary form decode it (JSON only, into the
// shapes that release had), so that tests prove a publisher in the
// default format is still read by nodes not upgraded yet during a rolling
// upgrade. It does not import live: live's own tests use it.
package livecompat
