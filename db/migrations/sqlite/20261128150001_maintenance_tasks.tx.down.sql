DROP TABLE maintenance_tasks;
