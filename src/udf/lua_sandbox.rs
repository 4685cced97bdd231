//! One call of a Lua user-defined function in a sandboxed Lua 5.4 state: only the `table`,
//! `string`, `math` and `utf8` libraries (no `os`, `io`, `require`, `load`, `debug`), a memory
//! limit, and a deadline checked by an instruction-count hook. A thread keeps the states of the
//! few functions it called last, their bodies compiled.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use cql::types::{DataType, Value};
use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, VmState};

use super::lua_values::{from_lua, to_lua};

/// How often (in Lua VM instructions) the deadline is checked.
const HOOK_EVERY: u32 = 10_000;

/// What one call may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall-clock time for the call.
    pub time: Duration,
    /// Bytes the Lua state may allocate.
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: Duration::from_millis(500),
            memory_bytes: 16 << 20,
        }
    }
}

/// Why a call failed; the server answers it as a FunctionFailure (0x1400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UdfError {
    /// The body did not compile, raised an error, ran too long, used too much memory, or
    /// returned a value that does not fit the return type. The message is the reason.
    Failed(String),
}

impl std::fmt::Display for UdfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UdfError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for UdfError {}

/// The reason of a Lua error, without the stack traceback mlua appends.
fn failed(e: impl std::fmt::Display) -> UdfError {
    let text = e.to_string();
    let reason = match text.find("\nstack traceback:") {
        Some(at) => &text[..at],
        None => &text,
    };
    UdfError::Failed(reason.trim_end().to_string())
}

/// How many functions' Lua states one thread keeps for reuse.
const CACHED_STATES: usize = 8;

/// The most memory a state may hold after a call to be kept.
const CACHED_STATE_BYTES: usize = 1 << 20;

/// A sandboxed Lua state with a function's body compiled in it.
struct Prepared {
    /// What it was made from: argument names, body, memory limit.
    key: (Vec<String>, String, usize),
    lua: Lua,
    function: Function,
}

thread_local! {
    /// The states of the functions this thread called last, most recent first: compiling a
    /// body in a fresh state costs far more than calling it, and a function runs once per row.
    static STATES: RefCell<Vec<Prepared>> = const { RefCell::new(Vec::new()) };
}

/// A fresh sandboxed state with `body` compiled as a function of `arg_names`.
fn prepare(arg_names: &[String], body: &str, memory_bytes: usize) -> Result<Prepared, UdfError> {
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8,
        LuaOptions::new(),
    )
    .map_err(failed)?;
    // The base library is always opened: take out what reads files or compiles code.
    let globals = lua.globals();
    for name in ["load", "loadfile", "dofile", "require", "collectgarbage"] {
        globals.raw_set(name, mlua::Value::Nil).map_err(failed)?;
    }
    lua.set_memory_limit(memory_bytes).map_err(failed)?;
    let source = format!("return function({})\n{body}\nend", arg_names.join(", "));
    let function: Function = lua.load(source).set_name("udf").eval().map_err(failed)?;
    Ok(Prepared {
        key: (arg_names.to_vec(), body.to_string(), memory_bytes),
        lua,
        function,
    })
}

/// Runs `body` as a function of `arg_names` with `args`, returning a value of `return_type`.
/// The state a body was compiled in is kept for the thread's next calls of it (at most
/// [`CACHED_STATES`] of them), so globals a body sets may outlive a call; a state whose call
/// failed is dropped.
///
/// # Errors
/// [`UdfError::Failed`] with the reason.
pub fn call(
    arg_names: &[String],
    body: &str,
    args: &[Option<Value>],
    return_type: &DataType,
    limits: Limits,
) -> Result<Option<Value>, UdfError> {
    for name in arg_names {
        let ok = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(UdfError::Failed(format!(
                "argument name {name:?} is not a Lua identifier"
            )));
        }
    }
    let cached = STATES.with_borrow_mut(|states| {
        states
            .iter()
            .position(|p| p.key.0 == arg_names && p.key.1 == body && p.key.2 == limits.memory_bytes)
            .map(|i| states.remove(i))
    });
    let prepared = match cached {
        Some(p) => p,
        None => prepare(arg_names, body, limits.memory_bytes)?,
    };
    let out = run(&prepared, args, return_type, limits.time)?;
    // A state that holds much (a body keeping data in globals) is not kept.
    if prepared.lua.used_memory() <= CACHED_STATE_BYTES {
        STATES.with_borrow_mut(|states| {
            states.insert(0, prepared);
            states.truncate(CACHED_STATES);
        });
    }
    Ok(out)
}

/// One call in a prepared state, under a deadline `time` from now.
fn run(
    prepared: &Prepared,
    args: &[Option<Value>],
    return_type: &DataType,
    time: Duration,
) -> Result<Option<Value>, UdfError> {
    let lua = &prepared.lua;
    let deadline = Instant::now() + time;
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        move |_, _| {
            if Instant::now() > deadline {
                Err(mlua::Error::runtime("time limit exceeded"))
            } else {
                Ok(VmState::Continue)
            }
        },
    )
    .map_err(failed)?;
    let mut values = MultiValue::new();
    for a in args {
        values.push_back(to_lua(lua, a.as_ref()).map_err(UdfError::Failed)?);
    }
    let out: mlua::Value = prepared.function.call(values).map_err(failed)?;
    from_lua(out, return_type).map_err(UdfError::Failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cql::types::NativeType;

    fn int() -> DataType {
        DataType::Native(NativeType::Int)
    }

    fn run(
        names: &[&str],
        body: &str,
        args: &[Option<Value>],
        ty: &DataType,
    ) -> Result<Option<Value>, UdfError> {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        call(
            &names,
            body,
            args,
            ty,
            Limits {
                time: Duration::from_millis(200),
                memory_bytes: 4 << 20,
            },
        )
    }

    #[test]
    fn adds_two_ints() {
        let out = run(
            &["a", "b"],
            "return a + b",
            &[Some(Value::Int(2)), Some(Value::Int(40))],
            &int(),
        );
        assert_eq!(out, Ok(Some(Value::Int(42))));
    }

    #[test]
    fn nil_is_null_both_ways() {
        let out = run(
            &["a"],
            "if a == nil then return nil end return a",
            &[None],
            &int(),
        );
        assert_eq!(out, Ok(None));
    }

    #[test]
    fn lists_and_maps_are_tables() {
        let list = DataType::List(Box::new(int()));
        let out = run(
            &["l"],
            "local r = {} for i, v in ipairs(l) do r[i] = v * 2 end return r",
            &[Some(Value::List(vec![Value::Int(1), Value::Int(2)]))],
            &list,
        );
        assert_eq!(
            out,
            Ok(Some(Value::List(vec![Value::Int(2), Value::Int(4)])))
        );
        let text = DataType::Native(NativeType::Text);
        let out = run(
            &["m"],
            "return m['k']",
            &[Some(Value::Map(vec![(
                Value::Text("k".into()),
                Value::Text("v".into()),
            )]))],
            &text,
        );
        assert_eq!(out, Ok(Some(Value::Text("v".into()))));
    }

    #[test]
    fn dangerous_libraries_are_absent() {
        for body in [
            "return os.time()",
            "return io.open('x')",
            "return require('x')",
            "return load('return 1')()",
            "return debug.traceback()",
            "return dofile('x')",
        ] {
            assert!(run(&[], body, &[], &int()).is_err(), "{body}");
        }
    }

    #[test]
    fn an_endless_loop_hits_the_time_limit() {
        let out = run(&[], "while true do end", &[], &int());
        assert!(
            matches!(&out, Err(UdfError::Failed(m)) if m.contains("time limit")),
            "{out:?}"
        );
    }

    #[test]
    fn a_huge_allocation_hits_the_memory_limit() {
        let out = run(
            &[],
            "local t = {} for i = 1, 1e8 do t[i] = i end return 1",
            &[],
            &int(),
        );
        assert!(
            matches!(&out, Err(UdfError::Failed(m)) if m.contains("memory")),
            "{out:?}"
        );
    }

    #[test]
    fn a_result_out_of_range_fails() {
        assert!(run(&[], "return 2^40", &[], &int()).is_err());
        assert!(run(&[], "return 'x'", &[], &int()).is_err());
    }

    #[test]
    fn tuples_are_sequence_tables() {
        let pair = DataType::Tuple(vec![int(), DataType::Native(NativeType::Bigint)]);
        let out = run(
            &["s", "v"],
            "s[1] = s[1] + 1 s[2] = s[2] + v return s",
            &[
                Some(Value::Tuple(vec![
                    Some(Value::Int(1)),
                    Some(Value::Bigint(10)),
                ])),
                Some(Value::Int(5)),
            ],
            &pair,
        );
        assert_eq!(
            out,
            Ok(Some(Value::Tuple(vec![
                Some(Value::Int(2)),
                Some(Value::Bigint(15))
            ])))
        );
    }

    #[test]
    fn errors_leave_out_the_traceback() {
        let out = run(&["a"], "error('boom')", &[Some(Value::Int(1))], &int());
        let Err(UdfError::Failed(m)) = out else {
            panic!("{out:?}");
        };
        assert!(m.ends_with("boom"), "{m}");
    }

    #[test]
    fn a_state_is_reused_and_dropped_after_a_failure() {
        let body =
            "if a == 0 then while true do end end counter = (counter or 0) + 1 return counter";
        assert_eq!(
            run(&["a"], body, &[Some(Value::Int(1))], &int()),
            Ok(Some(Value::Int(1)))
        );
        assert_eq!(
            run(&["a"], body, &[Some(Value::Int(1))], &int()),
            Ok(Some(Value::Int(2)))
        );
        assert!(run(&["a"], body, &[Some(Value::Int(0))], &int()).is_err());
        // The state that timed out is gone: a fresh one starts over.
        assert_eq!(
            run(&["a"], body, &[Some(Value::Int(1))], &int()),
            Ok(Some(Value::Int(1)))
        );
    }
}
