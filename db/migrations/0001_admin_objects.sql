-- 0001: administrator objects (SPEC §2). Each object keeps its validated,
-- normalised PUT body in `spec` (json keeps the field order gpugate wrote);
-- the columns beside it exist for references and constraints.

CREATE TABLE flavors (
    name        text PRIMARY KEY,
    spec        json NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cohorts (
    name        text PRIMARY KEY,
    spec        json NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cluster_queues (
    name        text PRIMARY KEY,
    cohort      text REFERENCES cohorts (name),
    spec        json NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The flavors a cluster queue uses, so a flavor cannot be deleted while a
-- cluster queue still lists it.
CREATE TABLE cluster_queue_flavors (
    cluster_queue text NOT NULL REFERENCES cluster_queues (name) ON DELETE CASCADE,
    flavor        text NOT NULL REFERENCES flavors (name),
    position      int  NOT NULL,
    PRIMARY KEY (cluster_queue, flavor)
);
CREATE INDEX cluster_queue_flavors_flavor ON cluster_queue_flavors (flavor);

CREATE TABLE priority_classes (
    name        text PRIMARY KEY,
    value       int NOT NULL,
    is_default  boolean NOT NULL DEFAULT false,
    spec        json NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- at most one default class
CREATE UNIQUE INDEX priority_classes_one_default ON priority_classes (is_default)
    WHERE is_default;

CREATE TABLE teams (
    name        text PRIMARY KEY,
    spec        json NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE team_queues (
    team          text NOT NULL REFERENCES teams (name),
    name          text NOT NULL,
    cluster_queue text NOT NULL REFERENCES cluster_queues (name),
    spec          json NOT NULL,
    version       bigint NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, name)
);
CREATE INDEX team_queues_cluster_queue ON team_queues (cluster_queue);
