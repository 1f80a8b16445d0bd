package main

// runTimer: 5.x timer messages (tests/matrix/README.md `timer`).
func runTimer(*env) (string, error) {
	return "", errNA{"rocketmq-client-go v2.1.2 has no timer API: primitive.Message has WithDelayTimeLevel only, no deliver-time or delay-seconds setter (the 5.x TIMER_* properties)"}
}
