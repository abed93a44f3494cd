// Package seal encrypts message bodies at rest.
//
// Every conversation has one random 256-bit data key. The key is stored
// only wrapped (AES-256-GCM) by a master key of a KeyRing, under the
// conversation's id as associated data, so a wrapped key copied to another
// conversation does not unwrap. A body is sealed with AES-256-GCM under
// its conversation's data key; the nonce is the (epoch, seq) the body was
// sequenced as, 6 bytes each, so nothing random is stored per message: a
// seq names one message within its epoch, and an epoch is never reused by
// a conversation. Previews are sealed under a second key derived from the
// data key, so the same (epoch, seq) never seals two texts under one key.
//
// Rotation: new data keys are wrapped by the ring's newest master key;
// older master keys stay in the ring to unwrap what they wrapped; Rewrap
// moves a data key to the newest master key without touching a message.
package seal
