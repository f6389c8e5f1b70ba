//! `petstore orders ...`: list every order (of a status, of a key), approve, deliver or cancel
//! one: the admin API's operations (`petstore_domain::order_admin`), on the command line.

use std::error::Error;
use std::io::Write;

use petstore_domain::order_admin::{self, OrderView};
use petstore_domain::{
    LifecycleError, Limit, OrderAction, OrderError, OrderListQuery, OrderStatus, PageRequest,
    Storage,
};

use comfy_table::{Table, presets};

use crate::cli::{Format, OrdersCommand};
use crate::timestamp;

/// Runs an `orders` command against `storage`, through the operations the admin API runs
/// (`petstore_domain::order_admin`).
pub async fn orders(storage: &dyn Storage, command: OrdersCommand) -> Result<(), Box<dyn Error>> {
    let (id, action) = match command {
        OrdersCommand::List {
            status,
            key,
            format,
        } => return list(storage, status, key, format).await,
        OrdersCommand::Approve { id } => (id, OrderAction::Approve),
        OrdersCommand::Deliver { id } => (id, OrderAction::Deliver),
        OrdersCommand::Cancel { id } => (id, OrderAction::Cancel),
    };
    match order_admin::change(storage, id, action).await {
        Ok(order) => {
            eprintln!(
                "order {} is {} (pet {})",
                order.id, order.status, order.pet_id
            );
            Ok(())
        }
        Err(OrderError::Refused(LifecycleError::Transition { from, action })) => {
            Err(format!("order {id} is {from}: it cannot be {action}").into())
        }
        Err(error) => Err(error.into()),
    }
}

async fn list(
    storage: &dyn Storage,
    status: Option<OrderStatus>,
    key: Option<i64>,
    format: Format,
) -> Result<(), Box<dyn Error>> {
    let mut all: Vec<OrderView> = Vec::new();
    let mut query = OrderListQuery {
        page: PageRequest {
            limit: Limit::MAX,
            after: None,
        },
        owner: key,
        status,
    };
    loop {
        let found = order_admin::list(storage, &query).await?;
        all.extend(found.items.into_iter().map(OrderView::of));
        match found.next_after {
            Some(after) => query.page.after = Some(after),
            None => break,
        }
    }
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?,
        Format::Text => {
            let mut table = Table::new();
            table.load_preset(presets::NOTHING);
            table.set_header(vec!["ID", "PET", "STATUS", "KEY", "CREATED"]);
            for view in &all {
                let order = &view.order;
                table.add_row(vec![
                    order.id.to_string(),
                    order.pet_id.to_string(),
                    order.status.to_string(),
                    view.owner_key_id
                        .map_or_else(|| "-".into(), |id| id.to_string()),
                    timestamp(Some(order.created_at)),
                ]);
            }
            writeln!(out, "{}", table.trim_fmt())?;
        }
    }
    Ok(())
}
