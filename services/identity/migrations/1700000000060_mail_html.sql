-- Up Migration
-- A queued mail's HTML part (rendered with the text part when the mail is decided); NULL for mails
-- queued before mail had one (they go as text only).
ALTER TABLE outgoing_mails ADD COLUMN html text;

-- Down Migration
ALTER TABLE outgoing_mails DROP COLUMN html;
