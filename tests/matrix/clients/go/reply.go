package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// answeredTimeout bounds a request the responder answers: its pull on a loaded machine.
const answeredTimeout = 30 * time.Second

// unansweredTimeout is the timeout of the request nobody answers.
const unansweredTimeout = 3 * time.Second

// replyPrefix is what the responder puts before a request's body to make its reply's body.
const replyPrefix = "reply-to-"

// runRequestReply: a responder (push consumer answering with consumer.CreateReplyMessage,
// sent by a producer of its own) and a requester doing N Request and N/2 RequestAsync calls;
// each reply must carry its request's CORRELATION_ID and the body made for it, on the
// cluster's reply topic. A request nobody answers must fail with the client's timeout.
func runRequestReply(e *env) (string, error) {
	replier, err := startProducer(e, "responder-producer")
	if err != nil {
		return "", err
	}
	defer replier.Shutdown()
	var failures replyFailures
	respond := func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, request := range msgs {
			failures.add(sendReply(replier, request))
		}
		// Answered or not, a request is not redelivered: a second reply would be unasked.
		return consumer.ConsumeSuccess, nil
	}
	requester, err := startProducer(e, "requester")
	if err != nil {
		return "", err
	}
	defer requester.Shutdown()
	// The broker pushes a reply to the requester's connection as its producer heartbeats
	// registered it. This client's first heartbeat goes out 1 s after start, before it knows
	// any broker, the next 30 s later, and Request's own heartbeat is skipped whenever the
	// NameServer has the topic (prepareSendRequest asks it, where Java looks at its own route
	// table). A push consumer's start heartbeats at once: the responder shares the
	// requester's client instance (role), so that heartbeat registers the requester.
	responder, err := startPushWith(e, e.group, "requester", e.topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, respond)
	if err != nil {
		return "", err
	}
	defer responder.Shutdown()
	replyTopic := os.Getenv("MATRIX_CLUSTER") + "_REPLY_TOPIC"

	for i := 0; i < e.count; i++ {
		request := newExpected("request-sync", i).message(e.topic)
		reply, err := requester.Request(context.Background(), answeredTimeout, request)
		if err != nil {
			return "", fmt.Errorf("sync request %d: %w", i, err)
		}
		if err := checkReply(request, reply, replyTopic); err != nil {
			return "", fmt.Errorf("sync request %d: %w", i, err)
		}
	}
	async := e.count / 2
	if err := requestAsync(e, requester, async, replyTopic); err != nil {
		return "", err
	}
	if err := failures.err(); err != nil {
		return "", err
	}
	if err := unanswered(e, requester); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d sync and %d async requests each answered by their reply (correlation, body); "+
		"an unanswered request timed out", e.count, async), nil
}

// replyFailures collects what went wrong on the responder's side.
type replyFailures struct {
	mu  sync.Mutex
	all []string
}

func (f *replyFailures) add(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = append(f.all, err.Error())
}

func (f *replyFailures) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.all) > 0 {
		return fmt.Errorf("%d replies not sent, first: %s", len(f.all), f.all[0])
	}
	return nil
}

// sendReply answers one request with the responder's producer.
func sendReply(replier rocketmq.Producer, request *primitive.MessageExt) error {
	body := append([]byte(replyPrefix), request.Body...)
	reply, err := consumer.CreateReplyMessage(request, body)
	if err != nil {
		return fmt.Errorf("create reply: %w", err)
	}
	// v2.1.2's CreateReplyMessage reads the body as properties instead of setting it (the
	// reply would arrive empty from any broker): the responder sets it.
	reply.Body = body
	result, err := replier.SendSync(context.Background(), reply)
	if err != nil {
		return fmt.Errorf("send reply: %w", err)
	}
	if result.Status != primitive.SendOK {
		return fmt.Errorf("send reply: status %d", result.Status)
	}
	return nil
}

// requestAsync makes count RequestAsync calls and checks each callback's reply. The client
// may call a callback twice (on the reply and when its future is evicted), so the first
// call per request counts.
func requestAsync(e *env, requester rocketmq.Producer, count int, replyTopic string) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[int]error{}
	for i := 0; i < count; i++ {
		i := i
		msg := newExpected("request-async", i).message(e.topic)
		wg.Add(1)
		err := requester.RequestAsync(context.Background(), answeredTimeout, func(_ context.Context, reply *primitive.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			if _, seen := got[i]; seen {
				return
			}
			if err == nil {
				err = checkReply(msg, reply, replyTopic)
			}
			got[i] = err
			wg.Done()
		}, msg)
		if err != nil {
			return fmt.Errorf("async request %d: %w", i, err)
		}
	}
	if err := waitGroup(&wg, answeredTimeout+consumeLimit); err != nil {
		return fmt.Errorf("async request callbacks: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, err := range got {
		if err != nil {
			return fmt.Errorf("async request %d: %w", i, err)
		}
	}
	return nil
}

// checkReply holds a reply to its request: same CORRELATION_ID, the responder's body for it,
// the reply topic.
func checkReply(request, reply *primitive.Message, replyTopic string) error {
	if reply == nil {
		return fmt.Errorf("no reply")
	}
	want := append([]byte(replyPrefix), request.Body...)
	if !bytes.Equal(reply.Body, want) {
		return fmt.Errorf("reply body %q, want %q", reply.Body, want)
	}
	correlation := request.GetProperty(primitive.PropertyCorrelationID)
	if correlation == "" || reply.GetProperty(primitive.PropertyCorrelationID) != correlation {
		return fmt.Errorf("reply correlation %q, request's %q",
			reply.GetProperty(primitive.PropertyCorrelationID), correlation)
	}
	if reply.Topic != replyTopic {
		return fmt.Errorf("reply topic %q, want %q", reply.Topic, replyTopic)
	}
	return nil
}

// unanswered sends a request to MATRIX_TOPIC2, which nobody consumes: the client's timeout.
func unanswered(e *env, requester rocketmq.Producer) error {
	msg := newExpected("request-unanswered", 0).message(e.topic2)
	reply, err := requester.Request(context.Background(), unansweredTimeout, msg)
	if err == nil {
		return fmt.Errorf("an unanswered request got a reply: %v", reply)
	}
	if !strings.Contains(err.Error(), "wait reply message timeout") {
		return fmt.Errorf("an unanswered request failed, but not by its timeout: %w", err)
	}
	return nil
}
