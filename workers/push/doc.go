// Package push is the stage that makes delivery early: it consumes
// im.sequenced (what fanout stored) and rings the API nodes holding the
// recipients' live connections, so an online device gets a message without
// polling. It never stores anything and the pull path stays the source of
// truth: a push lost anywhere costs latency, never a message.
//
// Per batch of a partition: the conversations' large flag and membership
// version (one pipelined read), members for the small ones (cached by
// version), the presence of every recipient (one pipelined read), then one
// publish per API node with every push meant for its devices. A large
// group costs one publish per message, whatever its size, on the group's
// own channel; the nodes holding members subscribe to it.
//
// It also consumes im.messages for the QoS 0 records fanout drops (typing,
// presence): pushed once to online members, never stored; and
// im.deadletter, to tell a sender whose record the pipeline refused.
package push
