DROP TABLE drover_operations;
