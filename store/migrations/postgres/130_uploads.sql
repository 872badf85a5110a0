-- 130: uploads (see migrations/130_uploads.sql), with Postgres's BOOLEAN.
ALTER TABLE runs ADD COLUMN upload BOOLEAN NOT NULL DEFAULT FALSE;
