//! A small RESP2/RESP3 client over TCP for the tests, benches and examples:
//! commands in, replies out, pipelines, pub/sub pushes. The module's own
//! package depends on no Redis client crate (the `emq` tool, a workspace
//! member of its own, has one).
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A reply value (an error inside an array, as EXEC returns one, is
/// [`Value::Error`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Nil,
    Int(i64),
    Bulk(Vec<u8>),
    Simple(String),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Set(Vec<Value>),
    Double(f64),
    Bool(bool),
    Error(String),
    Push(Vec<Value>),
}

/// A command's outcome: its value, or its error as the server wrote it
/// (`CODE detail`).
pub type Reply = Result<Value, String>;

pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn open(port: u16) -> io::Result<Conn> {
        Conn::open_addr(&format!("127.0.0.1:{port}"))
    }

    pub fn open_addr(addr: &str) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// Replies slower than this fail with a timeout (`None`: wait forever).
    pub fn set_timeout(&self, t: Option<Duration>) {
        let _ = self.writer.set_read_timeout(t);
    }

    /// Sends one command, without reading its reply.
    pub fn send(&mut self, args: &[&[u8]]) -> io::Result<()> {
        let mut buf = Vec::with_capacity(64);
        encode(&mut buf, args);
        self.writer.write_all(&buf)
    }

    /// Sends many commands at once, then reads every reply, in order.
    pub fn pipeline(&mut self, cmds: &[Vec<Vec<u8>>]) -> io::Result<Vec<Reply>> {
        let mut buf = Vec::with_capacity(64 * cmds.len());
        for c in cmds {
            let args: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
            encode(&mut buf, &args);
        }
        self.writer.write_all(&buf)?;
        cmds.iter().map(|_| self.read()).collect()
    }

    /// Reads one reply (or one pushed message).
    pub fn read(&mut self) -> io::Result<Reply> {
        Ok(match read_value(&mut self.reader)? {
            Value::Error(e) => Err(e),
            v => Ok(v),
        })
    }

    /// Runs one command.
    pub fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.send(args)
            .and_then(|_| self.read())
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// Runs one command; an I/O error (a server gone) is returned, not a
    /// panic.
    pub fn try_cmd(&mut self, args: &[&str]) -> io::Result<Reply> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&bytes)?;
        self.read()
    }

    /// Runs one command given as text.
    pub fn cmd(&mut self, args: &[&str]) -> Reply {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.call(&bytes)
    }

    /// Runs a command that must succeed.
    pub fn ok(&mut self, args: &[&str]) -> Value {
        self.cmd(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// Runs a command whose reply is an integer.
    pub fn int(&mut self, args: &[&str]) -> i64 {
        match self.ok(args) {
            Value::Int(n) => n,
            other => panic!("{args:?}: {other:?}"),
        }
    }
}

fn encode(buf: &mut Vec<u8>, args: &[&[u8]]) {
    buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        buf.extend_from_slice(a);
        buf.extend_from_slice(b"\r\n");
    }
}

fn line(r: &mut impl BufRead) -> io::Result<String> {
    let mut s = Vec::new();
    r.read_until(b'\n', &mut s)?;
    if s.len() < 2 || !s.ends_with(b"\r\n") {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    s.truncate(s.len() - 2);
    String::from_utf8(s).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn number(s: &str) -> io::Result<i64> {
    s.parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("not a number: {s}")))
}

fn blob(r: &mut impl BufRead, len: i64) -> io::Result<Vec<u8>> {
    let mut b = vec![0u8; len as usize + 2];
    r.read_exact(&mut b)?;
    b.truncate(len as usize);
    Ok(b)
}

fn many(r: &mut impl BufRead, n: i64) -> io::Result<Vec<Value>> {
    (0..n).map(|_| read_value(r)).collect()
}

fn read_value(r: &mut impl BufRead) -> io::Result<Value> {
    let l = line(r)?;
    let (kind, rest) = l.split_at(1);
    Ok(match kind {
        "+" => Value::Simple(rest.to_string()),
        "-" => Value::Error(rest.to_string()),
        ":" => Value::Int(number(rest)?),
        "$" => match number(rest)? {
            -1 => Value::Nil,
            n => Value::Bulk(blob(r, n)?),
        },
        "*" => match number(rest)? {
            -1 => Value::Nil,
            n => Value::Array(many(r, n)?),
        },
        "_" => Value::Nil,
        "#" => Value::Bool(rest == "t"),
        "," => Value::Double(rest.parse().unwrap_or(f64::NAN)),
        "(" => Value::Simple(rest.to_string()),
        "!" => Value::Error(String::from_utf8_lossy(&blob(r, number(rest)?)?).into_owned()),
        "=" => {
            let b = blob(r, number(rest)?)?;
            Value::Bulk(b.get(4..).unwrap_or_default().to_vec())
        }
        "%" => {
            let n = number(rest)?;
            let mut m = Vec::with_capacity(n as usize);
            for _ in 0..n {
                m.push((read_value(r)?, read_value(r)?));
            }
            Value::Map(m)
        }
        "~" => Value::Set(many(r, number(rest)?)?),
        ">" => Value::Push(many(r, number(rest)?)?),
        "|" => {
            // An attribute: read and drop it, then the value it annotates.
            let n = number(rest)?;
            many(r, 2 * n)?;
            read_value(r)?
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unknown reply {l}"),
            ))
        }
    })
}

impl Value {
    /// The value as text (bulk, simple, or an integer's digits).
    pub fn text(&self) -> String {
        match self {
            Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Simple(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            other => panic!("not a string: {other:?}"),
        }
    }

    /// `None` for nil, else the text.
    pub fn opt_text(&self) -> Option<String> {
        match self {
            Value::Nil => None,
            v => Some(v.text()),
        }
    }

    pub fn int(&self) -> i64 {
        match self {
            Value::Int(n) => *n,
            Value::Bulk(b) => String::from_utf8_lossy(b).parse().expect("an integer"),
            other => panic!("not an integer: {other:?}"),
        }
    }

    pub fn items(&self) -> &[Value] {
        match self {
            Value::Array(v) | Value::Set(v) | Value::Push(v) => v,
            Value::Nil => &[],
            other => panic!("not an array: {other:?}"),
        }
    }

    /// Bulk strings of an array, as text.
    pub fn texts(&self) -> Vec<String> {
        self.items().iter().map(Value::text).collect()
    }

    /// The value as text a person reads: bulk strings as (lossy) UTF-8.
    pub fn render(&self) -> String {
        match self {
            Value::Bulk(b) => format!("{:?}", String::from_utf8_lossy(b)),
            Value::Array(v) | Value::Set(v) | Value::Push(v) => {
                format!("[{}]", v.iter().map(Value::render).collect::<Vec<_>>().join(", "))
            }
            Value::Map(m) => format!(
                "{{{}}}",
                m.iter()
                    .map(|(k, v)| format!("{}: {}", k.render(), v.render()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => format!("{other:?}"),
        }
    }

    /// A field of a map (RESP3) or of a flat field/value array (RESP2).
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Map(m) => m.iter().find(|(k, _)| k.text() == name).map(|(_, v)| v),
            Value::Array(flat) => flat
                .chunks(2)
                .find(|kv| kv.len() == 2 && kv[0].text() == name)
                .map(|kv| &kv[1]),
            _ => None,
        }
    }
}
