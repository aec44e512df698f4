-- Up Migration
-- The W3C traceparent an event arrived with (null unless tracing is on): each delivery attempt of
-- the event is a span of that trace. A nullable column without a default: no table rewrite.
ALTER TABLE webhooks.events ADD COLUMN IF NOT EXISTS trace text;
