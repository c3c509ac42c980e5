DROP FUNCTION IF EXISTS filemill_assert(boolean, text);
