-- Privileges: nothing for PUBLIC; roles get what grant_producer (or the owner) gives them.
-- Last in name order, so that it covers every function the repeatable migrations before it define.

REVOKE ALL ON SCHEMA pgtask FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA pgtask FROM PUBLIC;
ALTER DEFAULT PRIVILEGES IN SCHEMA pgtask REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
