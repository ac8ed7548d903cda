"""The marketplace feature: appliances listed, downloaded (with their plan, lock and journal), tagged and upgraded."""
