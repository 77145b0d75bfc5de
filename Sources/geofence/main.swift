import GeofenceEngine

print("geofence: not yet implemented")
