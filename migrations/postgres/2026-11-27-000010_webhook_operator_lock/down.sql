DROP TABLE webhook_operator_lock;
