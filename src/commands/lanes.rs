//! Per-lane settings: EMQ.WEIGHT.

use crate::args;
use crate::errors::{Error, WEIGHT_RANGE};
use crate::keys;
use crate::state;
use crate::store::{Argv, Ctx, Kind};

/// `EMQ.WEIGHT P lane weight`: one `HSET P gweight lane weight`. A weight
/// never changes serviceability, so the ring is not touched.
pub fn weight(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    if argv.len() != 4 {
        return Err(Error::WrongArity);
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let lane = argv.get(2);
    args::lane(lane.bytes())?;
    let weight = argv.get(3);
    args::int_in(weight.bytes(), "weight", 1, i64::MAX, WEIGHT_RANGE)?;
    let weight_name = ctx.string(&keys::key(prefix, keys::WEIGHT));
    state::expect_kind(ctx, &weight_name, Kind::Hash)?;

    ctx.open_write(&weight_name).hash_set(lane, weight);
    ctx.replicate(c"HSET", &[weight_name.as_arg(), lane, weight]);
    ctx.reply_ok();
    Ok(())
}
