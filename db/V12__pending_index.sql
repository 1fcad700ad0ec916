-- The tasks waiting for their parents (state 'pending', V10__dependencies.sql), by queue: the
-- dashboard's queue depth counts them without reading the task table's history
-- (pgtask.queue_depth, R__05e_dashboard_reads.sql). Empty without dependencies.
CREATE INDEX task_pending_idx ON pgtask.task (queue) WHERE state = 'pending';
