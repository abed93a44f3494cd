// Package live is the bus between the push stage and the API nodes that
// hold devices' live connections: the envelopes they exchange and the
// Redis pub/sub they travel on.
//
// Every API node subscribes to its own sharded channel (Keys.NodeChannel);
// the push stage looks a message's recipients up in the presence registry
// (redisstore.PresenceOf), groups the online devices by the node holding
// them, and publishes one envelope batch per node. A large group is never
// looked up member by member: its messages go once to the group's channel
// (Keys.ConvChannel), which the nodes holding a member subscribe to while
// they do.
//
// The bus only makes delivery early. Everything on it is already stored
// (or, for QoS 0, never will be); a publish that reaches nobody costs
// latency, never a message: the device pulls with sync.
package live
