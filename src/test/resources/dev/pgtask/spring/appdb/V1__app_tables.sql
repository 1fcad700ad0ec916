CREATE TABLE orders (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer text NOT NULL,
  cents bigint NOT NULL
);

CREATE TABLE confirmations (
  order_id bigint PRIMARY KEY REFERENCES orders (id),
  recipient text NOT NULL,
  idempotency_key text NOT NULL
);
