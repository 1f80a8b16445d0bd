package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	rlog.SetLogLevel("error")
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{"127.0.0.1:" + os.Args[1]}),
		producer.WithGroupName("G"),
		producer.WithSendMsgTimeout(2*time.Second),
		producer.WithRetry(0),
	)
	if err != nil {
		panic(err)
	}
	if err := p.Start(); err != nil {
		panic(err)
	}
	msg := primitive.NewMessage("T", []byte("hi"))
	msg.WithTag("A")
	res, err := p.SendSync(context.Background(), msg)
	fmt.Println("single:", res, err)
	batch := []*primitive.Message{primitive.NewMessage("T", []byte("a")), primitive.NewMessage("T", []byte("bc"))}
	res, err = p.SendSync(context.Background(), batch...)
	fmt.Println("batch:", res, err)
	p.Shutdown()
}
