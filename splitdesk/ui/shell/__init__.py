"""The main window: toolbar, sidebar, menus, the controller and persistence around one stage."""
