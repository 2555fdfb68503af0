//! Decision tables: the schema, build, validation and diff (`table`), the
//! decision at run time (`decide`), exports to the libraries' own formats
//! (`export`), and two tables judged by samples (`agreement`).

pub mod agreement;
pub mod decide;
pub mod export;
pub mod table;
