-- Paused queues. A row here means: no worker claims new tasks from that queue; running tasks
-- finish normally, and enqueueing into it still works. pgtask.pause_queue / pgtask.resume_queue
-- write it; the claim and the views read it. Durable: a worker that starts later respects it.
CREATE TABLE pgtask.paused_queue (
  queue     text        PRIMARY KEY,
  paused_at timestamptz NOT NULL DEFAULT now(),
  paused_by text        NOT NULL DEFAULT current_user
);
