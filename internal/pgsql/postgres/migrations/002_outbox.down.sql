DROP TABLE drover_outbox;
DROP FUNCTION drover_outbox_notify();
