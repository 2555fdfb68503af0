//! Decision tables: the schema, build, validation and diff (`table`), the
//! decision at run time (`decide`), exports to the libraries' own formats
//! (`export`), how a table is deployed (`deploy`: the library's own rules
//! file or the drop-in), and two tables judged by samples (`agreement`).

pub mod agreement;
pub mod decide;
pub mod deploy;
pub mod export;
pub mod table;
