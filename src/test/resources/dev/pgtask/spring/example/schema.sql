CREATE TABLE IF NOT EXISTS orders (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer text NOT NULL,
  cents bigint NOT NULL
);

CREATE TABLE IF NOT EXISTS confirmations (
  order_id bigint PRIMARY KEY REFERENCES orders (id),
  recipient text NOT NULL,
  idempotency_key text NOT NULL
);
