// Asks a NameServer for topic routes with Apache's Go client (rocketmq-client-go v2, which
// sends version 317 and so gets the legacy route body with unquoted broker ids). Prints one
// `brokerName queueId` line per publish queue of each topic given, or FAIL and exits 1.
// Run by tests/namesrv_go_client.rs.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	rlog.SetLogLevel("error")
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{os.Args[1]})))
	if err != nil {
		fmt.Println("FAIL new admin:", err)
		os.Exit(1)
	}
	defer a.Close()
	for _, topic := range os.Args[2:] {
		mqs, err := a.FetchPublishMessageQueues(context.Background(), topic)
		if err != nil {
			fmt.Println("FAIL", topic, err)
			os.Exit(1)
		}
		lines := []string{}
		for _, mq := range mqs {
			lines = append(lines, fmt.Sprintf("%s %s %d", mq.Topic, mq.BrokerName, mq.QueueId))
		}
		sort.Strings(lines)
		for _, line := range lines {
			fmt.Println(line)
		}
	}
}
