DROP TABLE drover_outbox;
