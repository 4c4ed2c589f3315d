"""What a run is made from in the window: the questions editor and the endpoint panel."""
