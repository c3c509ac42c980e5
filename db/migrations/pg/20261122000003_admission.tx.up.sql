-- filemill_assert aborts the statement it is part of when ok is false, with the message
-- reason. A job admission is one statement of data-modifying CTEs ending in it, so a
-- reservation the balance cannot cover writes nothing, without a transaction round trip.
CREATE OR REPLACE FUNCTION filemill_assert(ok boolean, reason text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF NOT ok THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = reason;
  END IF;
  RETURN true;
END
$$;
