"""interpreter"""
