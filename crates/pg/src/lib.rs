//! tare pg: the PostgreSQL load engine.
