-- Up Migration
-- Active members without reading members x days. A report counted the distinct members of its
-- range and of each period over `report_active` (one row per card, local day and member): a year of
-- a card with 10,000 members active every day is 3,650,000 rows to read and de-duplicate for every
-- report. The fold now also keeps, from the `report_active` rows it adds:
-- - `report_active_periods`: the members active in a week (starting on Monday) or a calendar month;
-- - `report_active_counts`: how many members were active on a day, in a week, in a month (a whole
--   period of a report is one row of it);
-- - `report_active_years`: per card, member and year, the days of the year the member was active
--   (bit n: day of the year n + 1), so the members active in any range of days (a report's totals,
--   a period the range only partly covers) are one row per member and year, not per day.

CREATE TABLE report_active_periods (
  card_id bigint NOT NULL,
  period text NOT NULL CHECK (period IN ('week', 'month')),
  start date NOT NULL,
  member_id bigint NOT NULL,
  PRIMARY KEY (card_id, period, start, member_id)
);

CREATE TABLE report_active_counts (
  card_id bigint NOT NULL,
  period text NOT NULL CHECK (period IN ('day', 'week', 'month')),
  start date NOT NULL,
  members bigint NOT NULL,
  PRIMARY KEY (card_id, period, start)
);

CREATE TABLE report_active_years (
  card_id bigint NOT NULL,
  year int NOT NULL,
  member_id bigint NOT NULL,
  days bit(366) NOT NULL,
  PRIMARY KEY (card_id, year, member_id)
);

-- The rollups of what `report_active` holds already.
INSERT INTO report_active_periods (card_id, period, start, member_id)
SELECT DISTINCT a.card_id, p.period, date_trunc(p.period, a.day)::date, a.member_id
  FROM report_active a CROSS JOIN (VALUES ('week'), ('month')) p (period);
INSERT INTO report_active_counts (card_id, period, start, members)
SELECT card_id, 'day', day, count(*) FROM report_active GROUP BY card_id, day;
INSERT INTO report_active_counts (card_id, period, start, members)
SELECT card_id, period, start, count(*) FROM report_active_periods GROUP BY card_id, period, start;
INSERT INTO report_active_years (card_id, year, member_id, days)
SELECT card_id, extract(year FROM day)::int, member_id,
       bit_or(set_bit(B'0'::bit(366), extract(doy FROM day)::int - 1, 1))
  FROM report_active GROUP BY 1, 2, 3;

-- Down Migration
DROP TABLE report_active_years;
DROP TABLE report_active_counts;
DROP TABLE report_active_periods;
