DROP INDEX ix_jobs_list_state;
