//! `netblt profiles`: the named network paths of the simulator and emulator.

use clap::Args;

#[derive(Debug, Args)]
pub struct ProfilesArgs {
    /// Print one profile in full (links, hosts, where each number comes from).
    pub name: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ProfilesArgs) -> anyhow::Result<()> {
    use netblt_link::profiles;
    match args.name {
        Some(name) => {
            let p = profiles::profile(&name).ok_or_else(|| {
                crate::exit::CliError::usage(format!(
                    "unknown profile '{name}' (known: {})",
                    profiles::names().join(", ")
                ))
            })?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&p)?);
            } else {
                println!("{}: {}\n", p.name, p.summary);
                println!(
                    "forward link: {:?}\nreverse link: {:?}",
                    p.forward, p.reverse
                );
                println!("host A: {:?}\nhost B: {:?}", p.host_a, p.host_b);
                println!(
                    "wire overhead: {} bytes\ndefaults: {:?}\n",
                    p.wire_overhead, p.defaults
                );
                println!("Sources: {}", p.sources);
            }
        }
        None => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&profiles::all())?);
            } else {
                for p in profiles::all() {
                    println!("{:<16} {}", p.name, p.summary);
                }
            }
        }
    }
    Ok(())
}
