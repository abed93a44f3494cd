// Package rebuild restores a conversation's Redis state from its durable
// history (ClickHouse) after Redis lost it: the counter, the timeline
// within the retention window, the epoch, the dedupe ids of the dedupe
// window, the member set with its roles and former members' spans, large
// groups' @all references, the notice seqs and the conversation's tag.
// It also gives back what lives beside the conversations: members' inbox
// entries of a rebuilt conversation and every user's list indexes.
//
// It stages what it read in keys of their own and commits them in one
// script (lua/rebuild_commit.lua) that refuses when the conversation was
// sequenced or held meanwhile, so a rebuild either replaces the state as
// it read it or changes nothing. It works over redisstore's exported core
// (the store's client, keys, entry encoding and dedupe restore) and owns
// no key layout of its own.
package rebuild
