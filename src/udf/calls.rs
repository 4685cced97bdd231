//! A planned call of a user-defined function or aggregate, with its types resolved, and how it
//! runs: null handling (`RETURNS NULL ON NULL INPUT`), the Lua body through [`super::call`],
//! and an aggregate's state folded row by row then finished (Cassandra's `UDFunction.execute`
//! and `UDAggregate`).

use std::sync::Arc;

use cql::types::{DataType, Value};

use super::{failure, lua_sandbox, Limits, UdfError};
use crate::error::QueryError;
use crate::schema::FunctionDef;

/// A user function ready to call: its definition and its argument and return types resolved
/// in its keyspace (UDT fields filled in).
#[derive(Debug, Clone)]
pub struct FunctionCall {
    /// The definition.
    pub def: Arc<FunctionDef>,
    /// Resolved argument types.
    pub arg_types: Vec<DataType>,
    /// Resolved return type.
    pub return_type: DataType,
}

impl FunctionCall {
    /// The call of `def` with its argument and result types resolved in its keyspace (user
    /// types by name).
    ///
    /// # Errors
    /// InvalidRequest when a type no longer resolves.
    pub fn resolved(
        catalog: &crate::schema::Catalog,
        def: &Arc<FunctionDef>,
    ) -> Result<FunctionCall, QueryError> {
        let resolve = |t: &DataType| {
            catalog
                .resolve_type(&def.keyspace, t)
                .map_err(QueryError::invalid)
        };
        Ok(FunctionCall {
            def: def.clone(),
            arg_types: def
                .arg_types
                .iter()
                .map(resolve)
                .collect::<Result<_, _>>()?,
            return_type: resolve(&def.return_type)?,
        })
    }

    /// Runs the function on `args`. A function `RETURNS NULL ON NULL INPUT` answers null for
    /// any null argument without running.
    ///
    /// # Errors
    /// FunctionFailure (0x1400) when the body fails, runs past its limits, returns a value
    /// that does not fit, or is not Lua (ringdb runs no other language).
    pub fn call(&self, args: &[Option<Value>]) -> Result<Option<Value>, QueryError> {
        if !self.def.called_on_null_input && args.iter().any(Option::is_none) {
            return Ok(None);
        }
        let fail = |e: &UdfError| {
            let types: Vec<String> = self.def.arg_types.iter().map(ToString::to_string).collect();
            failure(&self.def.keyspace, &self.def.name, &types, e)
        };
        if self.def.language != super::LUA {
            return Err(fail(&UdfError::Failed(format!(
                "ringdb runs only Lua functions; language {} cannot be executed",
                self.def.language
            ))));
        }
        lua_sandbox::call(
            &self.def.arg_names,
            &self.def.body,
            args,
            &self.return_type,
            Limits::default(),
        )
        .map_err(|e| fail(&e))
    }

    /// True when a call with these arguments would run (Cassandra's `isCallableWrtNullable`).
    fn callable(&self, args: &[Option<Value>]) -> bool {
        self.def.called_on_null_input || args.iter().all(Option::is_some)
    }
}

/// A user aggregate ready to run.
#[derive(Debug, Clone)]
pub struct AggregateCall {
    /// `ks.name`, for messages.
    pub name: String,
    /// The argument types as declared (what its EXECUTE permission names).
    pub declared_args: Vec<DataType>,
    /// The state function: `(state, args...) -> state`.
    pub state_func: FunctionCall,
    /// The final function: `(state) -> result`.
    pub final_func: Option<FunctionCall>,
    /// The initial state.
    pub initcond: Option<Value>,
    /// Resolved argument types.
    pub arg_types: Vec<DataType>,
    /// Resolved result type.
    pub return_type: DataType,
}

/// One group's running state of a user aggregate.
#[derive(Debug, Clone)]
pub struct AggregateState {
    call: Arc<AggregateCall>,
    state: Option<Value>,
}

impl AggregateState {
    /// A fresh state (`INITCOND`, or null).
    pub fn new(call: Arc<AggregateCall>) -> Self {
        let state = call.initcond.clone();
        AggregateState { call, state }
    }

    /// Folds one row's arguments into the state. A state function `RETURNS NULL ON NULL
    /// INPUT` skips rows with a null argument (the state stays).
    ///
    /// # Errors
    /// The state function's failure.
    pub fn add(&mut self, args: Vec<Option<Value>>) -> Result<(), QueryError> {
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(self.state.take());
        all.extend(args);
        if !self.call.state_func.callable(&all) {
            self.state = all.swap_remove(0);
            return Ok(());
        }
        self.state = self.call.state_func.call(&all)?;
        Ok(())
    }

    /// The aggregate's result: the final function of the state, else the state.
    ///
    /// # Errors
    /// The final function's failure.
    pub fn finish(self) -> Result<Option<Value>, QueryError> {
        match &self.call.final_func {
            Some(f) => f.call(&[self.state]),
            None => Ok(self.state),
        }
    }
}
