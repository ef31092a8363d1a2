//! The parts of bellpepper's `ConstraintSystem` that every constraint
//! system of this crate writes the same way, written once as macros used
//! inside their `impl` blocks: no namespaces are kept (nothing here asks
//! for a variable's name) and each is its own root; a witness generator
//! also drops constraints unread and says that it is one.

/// `push_namespace`, `pop_namespace` and `get_root` of a constraint system
/// that keeps no names and is its own root.
macro_rules! flat_namespaces {
    () => {
        fn push_namespace<NR, N>(&mut self, _: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    };
}

/// [`flat_namespaces`], plus an `enforce` that never builds the linear
/// combinations and `is_witness_generator` true: for the constraint
/// systems that keep only the values of the variables.
macro_rules! witness_generator {
    () => {
        fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
        where
            A: FnOnce() -> AR,
            AR: Into<String>,
            LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
            LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
            LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        {
        }

        $crate::flat_cs::flat_namespaces!();

        fn is_witness_generator(&self) -> bool {
            true
        }
    };
}

pub(crate) use flat_namespaces;
pub(crate) use witness_generator;
