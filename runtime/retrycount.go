package runtime

// RetryCountHeader is the header in which every retry copy carries how many
// times the message was retried before: absent or 0 on the first delivery, 4
// on the fifth. Brokers count attempts with it (RabbitMQ also reads x-death,
// see runtime/rabbitmq). The value is decimal text.
const RetryCountHeader = "x-retry-count"
