package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// topicQueues is the contract's queue count of every matrix topic.
const topicQueues = 4

// pullBatch is how many messages one PullFrom asks for.
const pullBatch = 32

// maxPullsPerQueue bounds a read of one queue from offset 0 to its end.
const maxPullsPerQueue = 1000

// pollWait is how long one Poll waits for the next batch.
const pollWait = 2 * time.Second

// seekOffset is the queue offset lite-pull seeks to and commits.
const seekOffset = 1

func startPull(e *env, group, role, topic string) (rocketmq.PullConsumer, error) {
	pc, err := rocketmq.NewPullConsumer(
		consumer.WithNsResolver(resolver(e)),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(role)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		return nil, fmt.Errorf("new pull consumer %s: %w", role, err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}); err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", role, err)
	}
	if err := pc.Start(); err != nil {
		return nil, fmt.Errorf("start pull consumer %s: %w", role, err)
	}
	return pc, nil
}

func queueOf(e *env, topic string, q int) *primitive.MessageQueue {
	return &primitive.MessageQueue{Topic: topic, BrokerName: e.brokerName, QueueId: q}
}

// pullQueue reads one queue from offset to its end with PullFrom (offset must be below the
// end: a pull there is held by the broker until a message comes or the hold times out).
func pullQueue(pc rocketmq.PullConsumer, mq *primitive.MessageQueue, offset int64) ([]*primitive.MessageExt, error) {
	out := []*primitive.MessageExt{}
	for i := 0; i < maxPullsPerQueue; i++ {
		r, err := pc.PullFrom(context.Background(), mq, offset, pullBatch)
		if err != nil {
			return nil, fmt.Errorf("pull %s at %d: %w", mq.String(), offset, err)
		}
		if r.Status != primitive.PullFound {
			return out, nil
		}
		out = append(out, r.GetMessageExts()...)
		offset = r.NextBeginOffset
		// This client's pulls ask the broker to hold them while the queue has nothing new
		// (long polling), so stop at the queue's end instead of asking past it.
		if offset >= r.MaxOffset {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s has more than %d pulls of messages", mq.String(), maxPullsPerQueue)
}

// findByPull reads every queue of topic from offset 0 and checks each message of want is
// there once, intact, with its msgId: this client's stand-in for a lookup by msgId, which
// it has no API for (see runQuery).
func findByPull(e *env, topic string, want messageSet) error {
	msgs, err := pullAll(e, topic, topicQueues)
	if err != nil {
		return err
	}
	found := map[string]int{}
	for _, m := range msgs {
		id := m.GetProperty(indexProperty)
		if x, ok := want[id]; ok {
			if err := x.check(m); err != nil {
				return err
			}
			found[id]++
		}
	}
	for _, id := range want.ids() {
		if found[id] != 1 {
			return fmt.Errorf("message %s found %d times", id, found[id])
		}
	}
	return nil
}

// pullAll reads queues 0..queues-1 of topic from offset 0 to their ends.
func pullAll(e *env, topic string, queues int) ([]*primitive.MessageExt, error) {
	pc, err := startPull(e, e.group+"-lookup", "lookup", topic)
	if err != nil {
		return nil, err
	}
	defer pc.Shutdown()
	all := []*primitive.MessageExt{}
	for q := 0; q < queues; q++ {
		msgs, err := pullQueue(pc, queueOf(e, topic, q), 0)
		if err != nil {
			return nil, err
		}
		all = append(all, msgs...)
	}
	return all, nil
}

func runLitePull(e *env) (string, error) {
	sent, err := produce(e, "producer", e.topic, defaultSet("lite-pull", e.count))
	if err != nil {
		return "", err
	}
	want := newSet(sent)
	pc, err := startPull(e, e.group, "pull", e.topic)
	if err != nil {
		return "", err
	}
	defer pc.Shutdown()
	// Poll: the subscription's queues, rebalanced to this consumer, until every message came.
	got := map[string]int{}
	deadline := time.Now().Add(consumeLimit)
	for len(got) < len(want) && time.Now().Before(deadline) {
		cr, err := pc.Poll(context.Background(), pollWait)
		if errors.Is(err, consumer.ErrNoNewMsg) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("poll: %w", err)
		}
		for _, m := range cr.GetMsgList() {
			id := m.GetProperty(indexProperty)
			x, ok := want[id]
			if !ok {
				return "", fmt.Errorf("poll returned unexpected message %q", id)
			}
			if err := x.check(m); err != nil {
				return "", fmt.Errorf("poll: %w", err)
			}
			if got[id]++; got[id] > 1 {
				return "", fmt.Errorf("poll returned message %s twice", id)
			}
		}
		pc.ACK(context.Background(), cr, consumer.ConsumeSuccess)
	}
	if len(got) < len(want) {
		return "", fmt.Errorf("poll got %d of %d messages within %s", len(got), len(want), consumeLimit)
	}
	// Seek: the queue that holds the most messages, read again from seekOffset.
	perQueue := map[int]map[int64]expected{}
	for _, x := range sent {
		if perQueue[x.Queue] == nil {
			perQueue[x.Queue] = map[int64]expected{}
		}
		perQueue[x.Queue][x.QueueOffset] = x
	}
	q := 0
	for id, msgs := range perQueue {
		if len(msgs) > len(perQueue[q]) {
			q = id
		}
	}
	mq := queueOf(e, e.topic, q)
	msgs, err := pullQueue(pc, mq, seekOffset)
	if err != nil {
		return "", err
	}
	if len(msgs) != len(perQueue[q])-seekOffset {
		return "", fmt.Errorf("pull of queue %d from offset %d got %d messages, the queue holds %d from there",
			q, seekOffset, len(msgs), len(perQueue[q])-seekOffset)
	}
	for i, m := range msgs {
		x, ok := perQueue[q][int64(seekOffset+i)]
		if !ok || m.QueueOffset != int64(seekOffset+i) {
			return "", fmt.Errorf("pull from offset %d: message %d has queue offset %d", seekOffset, i, m.QueueOffset)
		}
		if err := x.check(m); err != nil {
			return "", fmt.Errorf("pull from offset %d: %w", seekOffset, err)
		}
	}
	// Commit seekOffset on that queue, then read it back with a new consumer of the group.
	if err := pc.UpdateOffset(mq, seekOffset); err != nil {
		return "", fmt.Errorf("update offset: %w", err)
	}
	if err := pc.PersistOffset(context.Background(), e.topic); err != nil {
		return "", fmt.Errorf("persist offset: %w", err)
	}
	pc.Shutdown()
	reader, err := startPull(e, e.group, "pull-reader", e.topic)
	if err != nil {
		return "", err
	}
	defer reader.Shutdown()
	committed, err := reader.CurrentOffset(mq)
	if err != nil {
		return "", fmt.Errorf("read committed offset: %w", err)
	}
	if committed != seekOffset {
		return "", fmt.Errorf("committed offset of queue %d reads back as %d, committed %d", q, committed, seekOffset)
	}
	return fmt.Sprintf("Poll got all %d once intact; PullFrom queue %d offset %d got exactly the %d from there; committed offset %d read back by a new consumer (no assign API: queues come from subscribe, or are named to PullFrom)",
		len(want), q, seekOffset, len(msgs), seekOffset), nil
}
