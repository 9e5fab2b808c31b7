//! The controllers.

pub mod fermat;
pub mod number;
pub mod tuple;
