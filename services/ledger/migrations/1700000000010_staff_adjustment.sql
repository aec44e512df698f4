-- Up Migration
-- Staff adjustments (the console's "add or deduct with a reason") are journal rows of their own
-- event, `staff_adjustment`. The journal's event CHECK is widened by adding that one label to the
-- list it already has, whatever other migrations added before (this runs after them), instead of
-- restating the whole list.
DO $$
DECLARE
  c record;
BEGIN
  FOR c IN
    SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
     WHERE conrelid = 'journal'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%cashback_earned%'
  LOOP
    IF position('staff_adjustment' IN c.def) = 0 THEN
      EXECUTE format('ALTER TABLE journal DROP CONSTRAINT %I', c.conname);
      EXECUTE format('ALTER TABLE journal ADD CONSTRAINT %I %s', c.conname,
                     replace(c.def, 'ARRAY[', 'ARRAY[''staff_adjustment''::text, '));
    END IF;
  END LOOP;
END $$;

-- Down Migration
SELECT 1;
